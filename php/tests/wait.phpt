--TEST--
Limiter::wait(): sleeps the shaper's delay, refuses a full queue, bounded by timeout
--EXTENSIONS--
throttlekit
--FILE--
<?php
// SPDX-License-Identifier: BSD-2-Clause
// 10 per second: departures 100 ms apart, at most 3 queued.
$l = new ThrottleKit\Limiter("leaky:10/s,max-queue=300ms");
$t = hrtime(true);
for ($i = 0; $i < 3; $i++) {
    $d = $l->wait("k");
    var_dump($d->allowed);
}
$ms = (hrtime(true) - $t) / 1e6;
var_dump($ms >= 150 && $ms < 1500);
// The queue is bounded: a burst beyond it is refused without sleeping
// (a sleep until its turn would take 400 ms or more; a loaded machine
// may be slow, not that slow).
$t = hrtime(true);
$n = 0;
for ($i = 0; $i < 8; $i++)
    $n += $l->check("q")->allowed;
$refused = $l->wait("q");
var_dump($n, $refused->allowed, (hrtime(true) - $t) / 1e6 < 300);
// timeout: cut short after 50 ms, the reservation stays taken.
$l = new ThrottleKit\Limiter("leaky:1/s,max-queue=3s", "memory", ["timeout" => 50000000]);
$l->check("t");
$t = hrtime(true);
$d = $l->wait("t");
$ms = (hrtime(true) - $t) / 1e6;
var_dump($d->allowed, $ms >= 40 && $ms < 600);
?>
--EXPECT--
bool(true)
bool(true)
bool(true)
bool(true)
int(4)
bool(false)
bool(true)
bool(false)
bool(true)
