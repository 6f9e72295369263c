--TEST--
PostgreSQL store specs: a bad one throws ThrottleKit\Exception saying where and what was expected; a server that is not there follows the fail policy; never the password
--EXTENSIONS--
throttlekit
--SKIPIF--
<?php
try {
    new ThrottleKit\Limiter("gcra:1/s", "postgresql://127.0.0.1:1/db");
} catch (ThrottleKit\Exception $e) {
    if ($e->getCode() == 95)
        die("skip libthrottlekit built without libpq, or no libpq.so.5");
}
?>
--INI--
zend.exception_ignore_args=0
error_log={PWD}/pg_spec.log
--FILE--
<?php
// SPDX-License-Identifier: BSD-2-Clause
use ThrottleKit\Limiter;

@unlink(__DIR__ . "/pg_spec.log");

function t(string $store, string $fail = "error") {
    try {
        $l = new Limiter("gcra:10/s", $store, ["fail" => $fail]);
        $d = $l->check("k");
        printf("%s: allowed=%d degraded=%d\n", $fail, $d->allowed, $d->degraded);
    } catch (Throwable $e) {
        echo get_class($e), " (", $e->getCode(), "): ", $e->getMessage(), "\n";
        $frame = print_r($e->getTrace()[0]["args"] ?? [], true);
        if (str_contains($e->getMessage() . $frame, "s3"))
            echo "LEAK: the password is in the exception\n";
    }
}
t("postgresql://u:s3cret@127.0.0.1/db?table=Bad");
t("postgresql://u:s3cret@127.0.0.1/db?timeout=forever");
t("postgresql://u:s3cret@127.0.0.1?table=t");
t("postgresql://u@127.0.0.1/db?password=s3cret&server_time=2");
t("postgresql://u@127.0.0.1/db?pass%77ord=s3cret&timeout=0");

// A port nothing listens on: bound, then closed.
$s = stream_socket_server("tcp://127.0.0.1:0");
$port = substr(strrchr(stream_socket_get_name($s, false), ":"), 1);
fclose($s);
foreach (["error", "open", "closed"] as $fail)
    t("postgresql://u:s3cret@127.0.0.1:$port/db?connect_timeout=1s", $fail);
// phpinfo() lists the store without its password.
ob_start();
phpinfo(INFO_MODULES);
foreach (explode("\n", ob_get_clean()) as $line)
    if (str_contains($line, "127.0.0.1:$port"))
        echo str_contains($line, "s3cret") ? "LEAK: $line\n" : "phpinfo: " . strtok($line, "?") . "\n";
// So does the error log.
foreach (file(__DIR__ . "/pg_spec.log") as $line)
    echo str_contains($line, "s3cret") ? "LEAK: $line" : "log: " . substr($line, strpos($line, "throttlekit:"));
?>
--EXPECTF--
ThrottleKit\Exception (22): store "postgresql://u:***@127.0.0.1/db?table=Bad": Invalid argument (EINVAL): byte %d: expected a table name of 1 to 63 bytes of a-z, 0-9 and '_', not beginning with a digit
ThrottleKit\Exception (22): store "postgresql://u:***@127.0.0.1/db?timeout=forever": Invalid argument (EINVAL): byte %d: expected a duration from 1ms to 1h (100ms, 2s)
ThrottleKit\Exception (22): store "postgresql://u:***@127.0.0.1?table=t": Invalid argument (EINVAL): byte %d: expected /DB after the host
ThrottleKit\Exception (22): store "postgresql://u@127.0.0.1/db?password=***&server_time=2": Invalid argument (EINVAL): byte %d: expected 0 or 1
ThrottleKit\Exception (22): store "postgresql://u@127.0.0.1/db?pass%77ord=***&timeout=0": Invalid argument (EINVAL): byte %d: expected a duration from 1ms to 1h (100ms, 2s)
ThrottleKit\StoreException (111): check on "postgresql://u:***@127.0.0.1:%d/db?connect_timeout=1s": %s (ECONNREFUSED)
open: allowed=1 degraded=1
closed: allowed=0 degraded=1
phpinfo: postgresql://u:***@127.0.0.1:%d/db
phpinfo: failures of "postgresql://u:***@127.0.0.1:%d/db
log: throttlekit: store "postgresql://u:***@127.0.0.1:%d/db?connect_timeout=1s" failed: %s (ECONNREFUSED); checks answered by the fail policy (first failure): 1 admitted by fail=open, 0 denied by fail=closed; 1 in all in process %d (at most a line per store every 10 s)
