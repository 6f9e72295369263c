--TEST--
Redis store specs: a bad one throws ThrottleKit\Exception saying where and what was expected, never the password
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
zend.exception_ignore_args=0
--FILE--
<?php
// SPDX-License-Identifier: BSD-2-Clause
use ThrottleKit\Limiter;

function t(string $store) {
    try {
        new Limiter("gcra:10/s", $store);
        echo "no exception\n";
    } catch (Throwable $e) {
        echo get_class($e), " (", $e->getCode(), "): ", $e->getMessage(), "\n";
        // #[\SensitiveParameter]: the trace hides the spec too.  Only
        // the frame's arguments: its file name is a random temporary
        // path, which may contain any two characters.
        $frame = print_r($e->getTrace()[0]["args"] ?? [], true);
        if (!str_contains($frame, "SensitiveParameterValue"))
            echo "the trace shows the store spec: $frame\n";
        if (str_contains($e->getMessage() . $frame, "s3"))
            echo "LEAK: the password is in the exception\n";
    }
}
t("redis://user:s3cret@127.0.0.1:99999");
t("redis://:s3cret@127.0.0.1/x");
t("redis://user:s3/cret@127.0.0.1");
t("redis://user:s3?cret@127.0.0.1");
// '@', ':', '/', '?' and '%' raw: hidden up to the last '@'.
t("redis://user:s3@:/?%cret@127.0.0.1");
// A mistyped scheme (no "://") hides the password as well.
t("redis:/user:s3cret@127.0.0.1");
t("redis+unix://user:s3cret@relative/path");
t("redis://127.0.0.1?timeout=forever");
// TLS: refused, with the reason, with or without hiredis_ssl.
t("rediss://user:s3cret@127.0.0.1?tls_ca=/nonexistent.pem");
?>
--EXPECTF--
ThrottleKit\Exception (22): store "redis://user:***@127.0.0.1:99999": Invalid argument (EINVAL): byte 30: expected a port from 1 to 65535
ThrottleKit\Exception (22): store "redis://:***@127.0.0.1/x": Invalid argument (EINVAL): byte 26: expected a database number below 2^30
ThrottleKit\Exception (22): store "redis://user:***@127.0.0.1": Invalid argument (EINVAL): byte 13: expected a port from 1 to 65535
ThrottleKit\Exception (22): store "redis://user:***@127.0.0.1": Invalid argument (EINVAL): byte 13: expected a port from 1 to 65535
ThrottleKit\Exception (22): store "redis://user:***@127.0.0.1": Invalid argument (EINVAL): byte 16: expected a host
ThrottleKit\Exception (22): store "redis:***@127.0.0.1": Invalid argument (EINVAL): %s
ThrottleKit\Exception (22): store "redis+unix://user:***@relative/path": Invalid argument (EINVAL): byte 25: expected '/' and an absolute socket path
ThrottleKit\Exception (22): store "redis://127.0.0.1?timeout=forever": Invalid argument (EINVAL): byte 26: expected a duration from 1us to 1h (100ms, 2s)
ThrottleKit\Exception (%d): store "rediss://user:***@127.0.0.1?tls_ca=/nonexistent.pem": %s
