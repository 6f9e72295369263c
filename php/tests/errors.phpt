--TEST--
Errors: ThrottleKit\Exception (an InvalidArgumentException) with the library's message
--EXTENSIONS--
throttlekit
--FILE--
<?php
// SPDX-License-Identifier: BSD-2-Clause
use ThrottleKit\Limiter;

function t(callable $f) {
    try {
        $f();
        echo "no exception\n";
    } catch (Throwable $e) {
        echo get_class($e), " (", $e->getCode(), "): ", $e->getMessage(), "\n";
    }
}
var_dump(is_subclass_of("ThrottleKit\\Exception", "InvalidArgumentException"));
var_dump(is_subclass_of("ThrottleKit\\StoreException", "RuntimeException"));
t(fn() => new Limiter("gcra:10/s,brust=5"));
t(fn() => new Limiter("nope:1/s"));
t(fn() => new Limiter(""));
t(fn() => new Limiter("gcra:10/s", "postgres://x"));
t(fn() => new Limiter("gcra:10/s", "shm:bad/name"));
// A CA file that is not there: refused with or without hiredis_ssl.
t(fn() => new Limiter("gcra:10/s", "rediss://127.0.0.1:7000?tls_ca=/nonexistent.pem"));
t(fn() => new Limiter("gcra:10/s", "rediss://127.0.0.1:7000?tls_ca=/nonexistent.pem", ["fail" => "open"]));
t(fn() => new Limiter("gcra:10/s", "shm:cap", ["capacity" => 1000]));
t(fn() => new Limiter("gcra:10/s", "memory", ["colour" => "red"]));
t(fn() => new Limiter("gcra:10/s", "memory", ["red"]));
t(fn() => new Limiter("gcra:10/s", "memory", ["fail" => "maybe"]));
t(fn() => new Limiter("gcra:10/s", "memory", ["timeout" => -1]));
t(fn() => new Limiter("gcra:10/s", "memory", ["timeout" => "1s"]));
t(fn() => new Limiter("gcra:10/s", "memory", ["capacity" => -1]));
t(fn() => new Limiter("gcra:10/s", "memory", ["prefix" => 5]));
t(fn() => new Limiter("gcra:10/s", "memory", ["prefix" => str_repeat("p", 257)]));
t(fn() => new Limiter("gcra:10/s", [1]));
t(fn() => new Limiter("gcra:10/s\0,burst=1000"));
t(fn() => new Limiter("gcra:10/s", "shm:a\0b"));
t(fn() => new Limiter("gcra:10/s", "memory", ["prefix" => "a\0b"]));
$l = new Limiter("gcra:10/s,burst=5");
t(fn() => $l->check(""));
t(fn() => $l->check(str_repeat("k", 1025)));
t(fn() => $l->check("k", 0));
t(fn() => $l->check("k", -3));
t(fn() => $l->check("k", 6));
t(fn() => $l->peek(""));
t(fn() => $l->reset(""));
t(fn() => $l->checkMany(["a", 5]));
t(fn() => $l->checkMany(["a", "n" => ["key" => "b", "cost" => "2"]]));
t(fn() => $l->checkMany([["key" => "b", "cost" => 0]]));
t(fn() => $l->checkMany([["key" => "b", "extra" => 1]]));
t(fn() => $l->checkMany(["a", ["key" => "b", "cost" => 99]]));
t(fn() => $l->wait("k", 6));
t(fn() => new Limiter("gcra:10/s,burst=5", "memory", ["prefix" => "dup:"]));
t(fn() => $l->check("k")->headers("html"));
t(fn() => (new ReflectionClass("ThrottleKit\\Limiter"))->newInstanceWithoutConstructor());
// One key, two algorithms on one store and prefix: each its own state.
(new Limiter("gcra:10/s", "memory", ["prefix" => "shape:"]))->check("k");
t(fn() => (new Limiter("fixed-window:10/1s", "memory", ["prefix" => "shape:"]))->check("k"));
// A long key just fits.
var_dump($l->check(str_repeat("k", 1024))->allowed);
?>
--EXPECTF--
bool(true)
bool(true)
ThrottleKit\Exception (22): invalid policy "gcra:10/s,brust=5": Invalid argument (EINVAL): expected %s at position %d
ThrottleKit\Exception (22): invalid policy "nope:1/s": Invalid argument (EINVAL): expected %s at position 0
ThrottleKit\Exception (22): invalid policy "": Invalid argument (EINVAL): expected %s at position 0
ThrottleKit\Exception (22): store "postgres://x": Invalid argument (EINVAL): expected "memory", "shm:NAME" %s, "redis://[USER[:PASSWORD]@]HOST[:PORT][/DB][?OPTIONS]" or "redis+unix://[USER[:PASSWORD]@]/PATH[?OPTIONS]" %s
ThrottleKit\Exception (22): store "shm:bad/name": Invalid argument (EINVAL): expected "memory", "shm:NAME" (NAME: 1 to 200 of [A-Za-z0-9._-]; %s
ThrottleKit\Exception (%d): store "rediss://127.0.0.1:7000?tls_ca=/nonexistent.pem": %s
ThrottleKit\Exception (%d): store "rediss://127.0.0.1:7000?tls_ca=/nonexistent.pem": %s
ThrottleKit\Exception (22): store "shm:cap": Invalid argument (EINVAL): %sa zone capacity that is a power of two%s
ThrottleKit\Exception (22): unknown option "colour" (expected prefix, fail, timeout or capacity)
ThrottleKit\Exception (22): options: expected names (prefix, fail, timeout, capacity), not a list
ThrottleKit\Exception (22): option "fail": expected "error", "open" or "closed"
ThrottleKit\Exception (22): option "timeout": expected an int >= 0 (ns)
ThrottleKit\Exception (22): option "timeout": expected an int >= 0 (ns)
ThrottleKit\Exception (22): option "capacity": expected an int >= 0
ThrottleKit\Exception (22): option "prefix": expected a string without NUL bytes
ThrottleKit\Exception (36): limiter: %s (ENAMETOOLONG): prefix longer than 256 bytes
TypeError (0): ThrottleKit\Limiter::__construct(): Argument #2 ($store) must be of type ?string, array given
ValueError (0): ThrottleKit\Limiter::__construct(): Argument #1 ($policy) must not contain any null bytes
ValueError (0): ThrottleKit\Limiter::__construct(): Argument #2 ($store) must not contain any null bytes
ThrottleKit\Exception (22): option "prefix": expected a string without NUL bytes
ThrottleKit\Exception (22): key: must not be empty
ThrottleKit\Exception (36): key: longer than 1024 bytes
ThrottleKit\Exception (22): cost: must be at least 1, not 0
ThrottleKit\Exception (22): cost: must be at least 1, not -3
ThrottleKit\Exception (34): check on "memory": %s (ERANGE): the cost exceeds what the policy can ever admit
ThrottleKit\Exception (22): key: must not be empty
ThrottleKit\Exception (22): key: must not be empty
ThrottleKit\Exception (22): checkMany(): element 1: expected a key or ["key" => string, "cost" => int]
ThrottleKit\Exception (22): checkMany(): element "n": expected a key or ["key" => string, "cost" => int]
ThrottleKit\Exception (22): cost: must be at least 1, not 0
ThrottleKit\Exception (22): checkMany(): element 0: expected a key or ["key" => string, "cost" => int]
ThrottleKit\Exception (34): checkMany on "memory", request 1 (nothing checked): %s (ERANGE): the cost exceeds what the policy can ever admit
ThrottleKit\Exception (34): wait on "memory": %s (ERANGE): the cost exceeds what the policy can ever admit
no exception
ThrottleKit\Exception (22): headers(): style "html": expected "ietf", "legacy" or "both"
ReflectionException (0): Class ThrottleKit\Limiter is an internal class marked as final that cannot be instantiated without invoking its constructor
no exception
bool(true)
