#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# prom-lint.sh FILE - a strict check of the Prometheus text exposition
# format (0.0.4) as throttlectl writes it; promtool is no Debian 12
# package.  Every sample belongs to a family declared before it by one
# HELP and one TYPE line (counter or gauge), a family's samples are
# contiguous, a counter's name ends in _total, names and label names
# are well formed, label values are quoted with only \\, \" and \n
# escaped, a series appears once, and a value is a decimal number.
# Prints each violation with its line number; exits 1 if there is one.
exec awk '
function bad(msg) { printf "line %d: %s: %s\n", NR, msg, $0; errors++ }
BEGIN { name = "^[a-zA-Z_:][a-zA-Z0-9_:]*$" }
/^# HELP / {
	if (NF < 4) bad("HELP without text")
	if ($3 !~ name) bad("bad metric name")
	if (help[$3]++) bad("second HELP")
	if (done[$3]) bad("family resumed")
	cur = $3; next
}
/^# TYPE / {
	if (NF != 4) bad("TYPE takes a name and a type")
	if ($4 != "counter" && $4 != "gauge") bad("unknown type")
	if (!help[$3]) bad("TYPE before HELP")
	if (type[$3] != "") bad("second TYPE")
	if ($4 == "counter" && $3 !~ /_total$/) bad("counter not named _total")
	type[$3] = $4; cur = $3; next
}
/^#/ { bad("comment other than HELP or TYPE"); next }
/^$/ { bad("empty line"); next }
{
	line = $0
	if (!match(line, /^[a-zA-Z_:][a-zA-Z0-9_:]*/)) { bad("no metric name"); next }
	m = substr(line, 1, RLENGTH); rest = substr(line, RLENGTH + 1)
	if (type[m] == "") { bad("sample of an undeclared family"); next }
	if (m != cur) { if (done[m]) bad("family not contiguous"); }
	if (cur != m && cur != "") done[cur] = 1
	cur = m
	series = m
	if (substr(rest, 1, 1) == "{") {
		rest = substr(rest, 2); first = 1
		while (substr(rest, 1, 1) != "}") {
			if (!first) {
				if (substr(rest, 1, 1) != ",") { bad("labels not separated by ,"); next }
				rest = substr(rest, 2)
			}
			first = 0
			if (!match(rest, /^[a-zA-Z_][a-zA-Z0-9_]*="/)) { bad("bad label"); next }
			series = series "|" substr(rest, 1, RLENGTH)
			rest = substr(rest, RLENGTH + 1)
			# the value: any byte but \ " newline, or an escape
			if (!match(rest, /^([^"\\]|\\[\\"n])*"/)) { bad("bad label value"); next }
			series = series substr(rest, 1, RLENGTH)
			rest = substr(rest, RLENGTH + 1)
		}
		rest = substr(rest, 2)
	}
	if (rest !~ /^ [0-9]+(\.[0-9]+)?$/) bad("value not a decimal number after one space")
	if (seen[series]++) bad("series twice")
}
END { exit errors ? 1 : 0 }
' "$1"
