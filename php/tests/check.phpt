--TEST--
Limiter::check(): burst, cost, remaining, retryAfter and resetAt
--EXTENSIONS--
throttlekit
--FILE--
<?php
// SPDX-License-Identifier: BSD-2-Clause
use ThrottleKit\Limiter;

$l = new Limiter("gcra:1/1h,burst=5");
$t0 = (int)(microtime(true) * 1e9);
$d = $l->check("k");
var_dump($d->allowed, $d->limit, $d->remaining, $d->retryAfter, $d->delay, $d->degraded);
var_dump($d->resetAt > $t0 && $d->resetAt <= $t0 + 3600 * 1000000000 + 5000000000);
$d = $l->check("k", cost: 3);
var_dump($d->allowed, $d->remaining);
$d = $l->check("k", 2);
var_dump($d->allowed, $d->remaining);
var_dump($d->retryAfter > 3000 * 1000000000 && $d->retryAfter <= 3600 * 1000000000);
$d = $l->check("k");
var_dump($d->allowed, $d->remaining);
// Keys are independent.
var_dump($l->check("other")->remaining);
?>
--EXPECT--
bool(true)
int(5)
int(4)
int(0)
int(0)
bool(false)
bool(true)
bool(true)
int(1)
bool(false)
int(1)
bool(true)
bool(true)
int(0)
int(4)
