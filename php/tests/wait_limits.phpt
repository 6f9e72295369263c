--TEST--
Limiter::wait(): the execution time limit does not end it (CPU time); a pcntl signal does
--EXTENSIONS--
throttlekit
--SKIPIF--
<?php if (!function_exists("pcntl_async_signals")) die("skip no pcntl"); ?>
--FILE--
<?php
// SPDX-License-Identifier: BSD-2-Clause
// One per second, so a second unit departs a second after the first.
$l = new ThrottleKit\Limiter("leaky:1/s,max-queue=3s");
// On Linux the limit counts the CPU time of the script, and a sleep
// uses none: a 1 s limit does not cut a 1.5 s wait short.
set_time_limit(1);
$l->check("t");
$l->check("t");
$t = hrtime(true);
$d = $l->wait("t");
$ms = (hrtime(true) - $t) / 1e6;
var_dump($d->allowed, $ms >= 1500);
set_time_limit(0);
// A signal handled with async signals interrupts it at once: after the
// alarm's second, long before the five seconds of the wait.
pcntl_async_signals(true);
pcntl_signal(SIGALRM, function () { echo "SIGALRM\n"; });
$l = new ThrottleKit\Limiter("leaky:1/s,max-queue=10s");
for ($i = 0; $i < 5; $i++)
    $l->check("s");
pcntl_alarm(1);
$t = hrtime(true);
$d = $l->wait("s");
$ms = (hrtime(true) - $t) / 1e6;
var_dump($d->allowed, $ms >= 900 && $ms < 3500);
?>
--EXPECT--
bool(true)
bool(true)
SIGALRM
bool(false)
bool(true)
