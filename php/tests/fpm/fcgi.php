<?php
// SPDX-License-Identifier: BSD-2-Clause
// A FastCGI client that sends many requests over one kept-alive
// connection (FCGI_KEEP_CONN), so that one php-fpm worker serves them all:
//   php fcgi.php HOST:PORT SCRIPT COUNT:QUERY...
// sends COUNT requests of each QUERY in turn ({m} in it: i mod 100), and
// after each group prints the body of its last answer and the RssAnon of
// the worker that gave it (read from /proc: run as its user or root).
// Ends with "errors=N": the answers that did not start with "pid=".
[$self, $addr, $script] = array_slice($argv, 0, 3);
$groups = array_slice($argv, 3);
$s = stream_socket_client("tcp://$addr", $errno, $errstr, 5);
if (!$s) {
    fwrite(STDERR, "fcgi: $addr: $errstr\n");
    exit(1);
}

function record(int $type, string $body): string {
    return pack("CCnnCx", 1, $type, 1, strlen($body), 0) . $body;
}

function pairs(array $params): string {
    $out = "";
    foreach ($params as $k => $v) {
        foreach ([strlen($k), strlen($v)] as $len)
            $out .= $len < 128 ? chr($len) : pack("N", $len | 0x80000000);
        $out .= $k . $v;
    }
    return $out;
}

function read_exact($s, int $n): string {
    $buf = "";
    while (strlen($buf) < $n) {
        $chunk = fread($s, $n - strlen($buf));
        if ($chunk === "" || $chunk === false)
            throw new RuntimeException("connection closed");
        $buf .= $chunk;
    }
    return $buf;
}

function request($s, string $script, string $query): string {
    $params = pairs([
        "SCRIPT_FILENAME" => $script, "SCRIPT_NAME" => "/" . basename($script),
        "REQUEST_METHOD" => "GET", "QUERY_STRING" => $query,
        "SERVER_PROTOCOL" => "HTTP/1.1", "GATEWAY_INTERFACE" => "CGI/1.1",
    ]);
    fwrite($s, record(1, pack("nCx5", 1, 1)) . record(4, $params) . record(4, "") . record(5, ""));
    $out = "";
    for (;;) {
        $h = unpack("Cversion/Ctype/nid/nlen/Cpad/x", read_exact($s, 8));
        $body = $h["len"] ? read_exact($s, $h["len"]) : "";
        if ($h["pad"])
            read_exact($s, $h["pad"]);
        if ($h["type"] == 6)
            $out .= $body;
        elseif ($h["type"] == 3)
            break;
    }
    $parts = explode("\r\n\r\n", $out, 2);
    return $parts[1] ?? $out;
}

$errors = 0;
foreach ($groups as $g) {
    [$count, $q] = explode(":", $g, 2);
    $last = "";
    for ($i = 0; $i < (int)$count; $i++) {
        $last = request($s, $script, strtr($q, ["{i}" => $i, "{m}" => $i % 100]));
        if (!str_starts_with($last, "pid="))
            $errors++;
    }
    echo $last;
    if (preg_match('/^pid=(\d+)/', $last, $m) &&
        preg_match('/^RssAnon:\s+(\d+)/m', file_get_contents("/proc/$m[1]/status"), $r))
        echo "rss=$r[1]\n";
}
echo "errors=$errors\n";
