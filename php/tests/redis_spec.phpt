--TEST--
Redis store specs: a bad one throws ThrottleKit\Exception naming every form, never the password
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
use ThrottleKit\Limiter;

function t(string $store) {
    try {
        new Limiter("gcra:10/s", $store);
        echo "no exception\n";
    } catch (Throwable $e) {
        echo get_class($e), " (", $e->getCode(), "): ", $e->getMessage(), "\n";
        // #[\SensitiveParameter]: the trace hides the spec too.
        $frame = print_r($e->getTrace()[0], true);
        if (!str_contains($frame, "SensitiveParameterValue"))
            echo "the trace shows the store spec: $frame\n";
        if (str_contains($e->getMessage() . $frame, "s3"))
            echo "LEAK: the password is in the exception\n";
    }
}
t("redis://user:s3cret@127.0.0.1:99999");
t("redis://:s3cret@127.0.0.1/x");
t("redis://user:s3/cret@127.0.0.1");
t("redis+unix://user:s3cret@relative/path");
t("redis://127.0.0.1?timeout=forever");
t("rediss://user:s3cret@127.0.0.1");
?>
--EXPECT--
ThrottleKit\Exception (22): store "redis://user:***@127.0.0.1:99999": Invalid argument (EINVAL): expected "memory", "shm:NAME" (NAME: 1 to 200 of [A-Za-z0-9._-]; a zone capacity that is a power of two), "redis://[USER[:PASSWORD]@]HOST[:PORT][/DB][?OPTIONS]" or "redis+unix://[USER[:PASSWORD]@]/PATH[?OPTIONS]" (OPTIONS: timeout=, connect_timeout=, key_prefix=, server_time=1; see tk_store_open(3))
ThrottleKit\Exception (22): store "redis://:***@127.0.0.1/x": Invalid argument (EINVAL): expected "memory", "shm:NAME" (NAME: 1 to 200 of [A-Za-z0-9._-]; a zone capacity that is a power of two), "redis://[USER[:PASSWORD]@]HOST[:PORT][/DB][?OPTIONS]" or "redis+unix://[USER[:PASSWORD]@]/PATH[?OPTIONS]" (OPTIONS: timeout=, connect_timeout=, key_prefix=, server_time=1; see tk_store_open(3))
ThrottleKit\Exception (22): store "redis://user:***@127.0.0.1": Invalid argument (EINVAL): expected "memory", "shm:NAME" (NAME: 1 to 200 of [A-Za-z0-9._-]; a zone capacity that is a power of two), "redis://[USER[:PASSWORD]@]HOST[:PORT][/DB][?OPTIONS]" or "redis+unix://[USER[:PASSWORD]@]/PATH[?OPTIONS]" (OPTIONS: timeout=, connect_timeout=, key_prefix=, server_time=1; see tk_store_open(3))
ThrottleKit\Exception (22): store "redis+unix://user:***@relative/path": Invalid argument (EINVAL): expected "memory", "shm:NAME" (NAME: 1 to 200 of [A-Za-z0-9._-]; a zone capacity that is a power of two), "redis://[USER[:PASSWORD]@]HOST[:PORT][/DB][?OPTIONS]" or "redis+unix://[USER[:PASSWORD]@]/PATH[?OPTIONS]" (OPTIONS: timeout=, connect_timeout=, key_prefix=, server_time=1; see tk_store_open(3))
ThrottleKit\Exception (22): store "redis://127.0.0.1?timeout=forever": Invalid argument (EINVAL): expected "memory", "shm:NAME" (NAME: 1 to 200 of [A-Za-z0-9._-]; a zone capacity that is a power of two), "redis://[USER[:PASSWORD]@]HOST[:PORT][/DB][?OPTIONS]" or "redis+unix://[USER[:PASSWORD]@]/PATH[?OPTIONS]" (OPTIONS: timeout=, connect_timeout=, key_prefix=, server_time=1; see tk_store_open(3))
ThrottleKit\Exception (95): store "rediss://user:***@127.0.0.1": Not supported by this build (ENOTSUP): rediss:// is not supported yet, and redis:// needs a libthrottlekit built with hiredis
