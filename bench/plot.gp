# SPDX-License-Identifier: BSD-2-Clause
# bench/plot.gp - the chart of a tk-bench run.
#
#   gnuplot -e "datadir='bench/results'" bench/plot.gp
#
# Reads ns-allow.dat, ns-deny.dat, tput-hot.dat and tput-mid.dat from
# datadir (tk-bench --dat writes them) and writes datadir/chart.png.

if (!exists("datadir")) datadir = "."

if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
	set terminal pngcairo size 1500,1000 font "sans,10"
} else {
	set terminal png size 1500,1000
}
set output datadir."/chart.png"

set datafile missing "nan"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set key above horizontal maxrows 2 font ",9"
set yrange [0:*]

set multiplot layout 2,2 title \
	"throttlekit (GCRA) next to the floor and the designs users pick instead"

set title "allow path (every check admitted and written), 1 worker"
set ylabel "ns per check (lower is better)"
plot datadir."/ns-allow.dat" using 2:xtic(1) title "floor (clock + CAS)", \
	'' using 3 title "tk zone (shm)", \
	'' using 4 title "tk memory store", \
	'' using 5 title "mutex table (nginx design)", \
	'' using 6 title "per-process tables (wrong limit)"

set title "deny path (every check denied), 1 worker"
plot datadir."/ns-deny.dat" using 2:xtic(1) title "floor (clock + CAS)", \
	'' using 3 title "tk zone (shm)", \
	'' using 4 title "tk memory store", \
	'' using 5 title "mutex table (nginx design)", \
	'' using 6 title "per-process tables (wrong limit)"

set title "one hot key, allow path: throughput by workers"
set ylabel "million checks/s, all workers (higher is better)"
set xlabel "workers (processes; threads for the memory store)"
plot datadir."/tput-hot.dat" using 2:xtic(1) title "floor (clock + CAS)", \
	'' using 3 title "tk zone (shm)", \
	'' using 4 title "tk memory store", \
	'' using 5 title "mutex table (nginx design)", \
	'' using 6 title "per-process tables (wrong limit)"

set title "100k keys uniform, allow path: throughput by workers"
plot datadir."/tput-mid.dat" using 2:xtic(1) title "floor (clock + CAS)", \
	'' using 3 title "tk zone (shm)", \
	'' using 4 title "tk memory store", \
	'' using 5 title "mutex table (nginx design)", \
	'' using 6 title "per-process tables (wrong limit)"

unset multiplot
