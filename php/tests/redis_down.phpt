--TEST--
An unreachable Redis server: StoreException under fail "error", a degraded Decision under "open" and "closed"
--EXTENSIONS--
throttlekit
--SKIPIF--
<?php
try {
    new ThrottleKit\Limiter("gcra:1/s", "redis://127.0.0.1:1");
} catch (ThrottleKit\Exception $e) {
    if ($e->getCode() == 95)
        die("skip libthrottlekit built without hiredis");
}
?>
--INI--
error_log={PWD}/redis_down.log
--FILE--
<?php
// SPDX-License-Identifier: BSD-2-Clause
use ThrottleKit\Limiter;

@unlink(__DIR__ . "/redis_down.log");

// A port nothing listens on: bound, then closed.
$s = stream_socket_server("tcp://127.0.0.1:0");
$port = substr(strrchr(stream_socket_get_name($s, false), ":"), 1);
fclose($s);
$store = "redis://user:s3cret@127.0.0.1:$port?timeout=50ms&connect_timeout=50ms";
foreach (["error", "open", "closed"] as $fail) {
    $t = hrtime(true);
    try {
        // The store connects lazily: constructing does not fail.
        $l = new Limiter("gcra:10/s,burst=5", $store, ["fail" => $fail]);
        $d = $l->check("k");
        // A degraded denial says when to come back: the library's
        // degraded decision, one second; an admission, never.
        printf("%s: allowed=%d degraded=%d limit=%d retryAfter=%d (%d s)\n",
            $fail, $d->allowed, $d->degraded, $d->limit, $d->retryAfter,
            $d->retryAfterSeconds());
    } catch (Throwable $e) {
        echo "$fail: ", get_class($e), " (", $e->getCode(), "): ", $e->getMessage(), "\n";
    }
    if (hrtime(true) - $t > 1e9)
        echo "$fail: took more than a second\n";
}
// phpinfo() lists the store without its password.
ob_start();
phpinfo(INFO_MODULES);
foreach (explode("\n", ob_get_clean()) as $line)
    if (str_contains($line, "127.0.0.1:$port"))
        echo str_contains($line, "s3cret") ? "LEAK: $line\n" : "phpinfo: " . strtok($line, "?") . "\n";
// So does the error log: one line for the store's first failure, the
// reason and what answered it.
foreach (file(__DIR__ . "/redis_down.log") as $line)
    echo str_contains($line, "s3cret") ? "LEAK: $line" : "log: " . substr($line, strpos($line, "throttlekit:"));
?>
--EXPECTF--
error: ThrottleKit\StoreException (111): check on "redis://user:***@127.0.0.1:%d?timeout=50ms&connect_timeout=50ms": %s (ECONNREFUSED)
open: allowed=1 degraded=1 limit=5 retryAfter=0 (0 s)
closed: allowed=0 degraded=1 limit=5 retryAfter=1000000000 (1 s)
phpinfo: redis://user:***@127.0.0.1:%d
phpinfo: failures of "redis://user:***@127.0.0.1:%d
log: throttlekit: store "redis://user:***@127.0.0.1:%d?timeout=50ms&connect_timeout=50ms" failed: %s (ECONNREFUSED); checks answered by the fail policy (first failure): 1 admitted by fail=open, 0 denied by fail=closed; 1 in all in process %d (at most a line per store every 10 s)
