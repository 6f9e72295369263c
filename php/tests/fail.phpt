--TEST--
fail: a store failure throws StoreException under "error", decides degraded under "open" and "closed"
--EXTENSIONS--
throttlekit
--SKIPIF--
<?php if (!getenv("TK_SHM_DIR")) die("skip TK_SHM_DIR not set (run through make check)"); ?>
--INI--
error_log={PWD}/fail.log
throttlekit.fail=closed
--FILE--
<?php
// SPDX-License-Identifier: BSD-2-Clause
use ThrottleKit\Limiter;

$zone = "failtest" . getmypid();
$err = new Limiter("gcra:10/s", "shm:$zone", ["fail" => "error"]);
$open = new Limiter("gcra:10/s", "shm:$zone", ["fail" => "open", "prefix" => "o:"]);
$closed = new Limiter("gcra:10/s", "shm:$zone", ["prefix" => "c:"]); // the INI default
var_dump($err->check("k")->allowed, $open->check("k")->degraded, $closed->check("k")->degraded);
// Truncate the zone under the attached stores: every later call fails (EPROTO).
$f = fopen(getenv("TK_SHM_DIR") . "/throttlekit.$zone", "r+");
ftruncate($f, 0);
fclose($f);
try {
    $err->check("k");
    echo "no exception\n";
} catch (ThrottleKit\StoreException $e) {
    echo get_class($e), " (", $e->getCode(), "): ", $e->getMessage(), "\n";
}
foreach ([$open, $closed] as $l) {
    $d = $l->check("k");
    var_dump($d->allowed, $d->degraded);
    $d = $l->peek("k");
    var_dump($d->allowed, $d->degraded);
    $m = $l->checkMany(["a", "b"]);
    var_dump($m[0]->allowed, $m[1]->degraded);
}
// Degraded: a denial says when to come back (the library's degraded
// decision: one second), by every call; an admission, never.
foreach (["open" => $open, "closed" => $closed] as $name => $l)
    printf("%s: retryAfter check %d, peek %d, checkMany %d\n", $name,
        $l->check("k")->retryAfter, $l->peek("k")->retryAfter,
        $l->checkMany(["a"])[0]->retryAfter);
// Degraded: no quota fields; a denial says when to come back.
var_dump($open->check("k")->headers("both"), $closed->check("k")->headers("both"));
try { $open->reset("k"); } catch (ThrottleKit\StoreException $e) { echo "reset: ", $e->getCode(), "\n"; }
?>
--EXPECTF--
bool(true)
bool(false)
bool(false)
ThrottleKit\StoreException (71): check on "shm:failtest%d": %s (EPROTO)
bool(true)
bool(true)
bool(true)
bool(true)
bool(true)
bool(true)
bool(false)
bool(true)
bool(false)
bool(true)
bool(false)
bool(true)
open: retryAfter check 0, peek 0, checkMany 0
closed: retryAfter check 1000000000, peek 1000000000, checkMany 1000000000
array(0) {
}
array(1) {
  ["Retry-After"]=>
  string(1) "1"
}
reset: 71
