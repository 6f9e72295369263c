--TEST--
fail: a store that cannot be opened throws under "error", is degraded under "open"/"closed" until it opens
--EXTENSIONS--
throttlekit
--SKIPIF--
<?php if (!getenv("TK_SHM_DIR")) die("skip TK_SHM_DIR not set (run through make check)"); ?>
--INI--
error_log={PWD}/fail_open.log
--FILE--
<?php
// SPDX-License-Identifier: BSD-2-Clause
use ThrottleKit\Limiter;

// A zone file this process's trust rules refuse: writable by every user.
$zone = "refused" . getmypid();
$path = getenv("TK_SHM_DIR") . "/throttlekit.$zone";
new Limiter("gcra:10/s", "shm:$zone");   // creates it
chmod($path, 0666);
$zone2 = "refused2" . getmypid();
copy($path, getenv("TK_SHM_DIR") . "/throttlekit.$zone2");
chmod(getenv("TK_SHM_DIR") . "/throttlekit.$zone2", 0666);
try {
    new Limiter("gcra:10/s", "shm:$zone2");
    echo "no exception\n";
} catch (ThrottleKit\StoreException $e) {
    echo get_class($e), " (", $e->getCode(), "): ", $e->getMessage(), "\n";
}
$d = (new Limiter("gcra:10/s", "shm:$zone2", ["fail" => "open"]))->check("k");
var_dump($d->allowed, $d->degraded, $d->limit);
$d = (new Limiter("gcra:10/s", "shm:$zone2", ["fail" => "closed"]))->check("k");
var_dump($d->allowed, $d->degraded);
$d = (new Limiter("leaky:1/s,max-queue=2s", "shm:$zone2", ["fail" => "closed"]))->wait("k");
var_dump($d->allowed, $d->degraded);
// The library's degraded decision: the limit, and a second's retry.
$closed = new Limiter("gcra:10/s,burst=4", "shm:$zone2", ["fail" => "closed", "prefix" => "r:"]);
$d = $closed->check("k");
var_dump($d->limit, $d->retryAfterSeconds(), $d->headers("both"));
// Put right: a second on, the same Limiter decides again.
chmod(getenv("TK_SHM_DIR") . "/throttlekit.$zone2", 0600);
usleep(1100000);
$d = $closed->check("k");
var_dump($d->allowed, $d->degraded, $d->remaining);
?>
--EXPECTF--
ThrottleKit\StoreException (13): store "shm:refused2%d": %s (EACCES): %s
bool(true)
bool(true)
int(10)
bool(false)
bool(true)
bool(false)
bool(true)
int(4)
int(1)
array(1) {
  ["Retry-After"]=>
  string(1) "1"
}
bool(true)
bool(false)
int(3)
