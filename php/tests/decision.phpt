--TEST--
Decision: readonly ints, retryAfterSeconds() rounded up, not constructible, cloneable or serializable
--EXTENSIONS--
throttlekit
--FILE--
<?php
// SPDX-License-Identifier: BSD-2-Clause
$l = new ThrottleKit\Limiter("gcra:1/1h,burst=1");
$l->check("k");
$d = $l->check("k");
var_dump($d->allowed);
// Just under an hour: rounding down would say 3599.
var_dump($d->retryAfter > 3599 * 1000000000 && $d->retryAfter < 3600 * 1000000000);
var_dump($d->retryAfterSeconds());
var_dump($l->check("fresh")->retryAfterSeconds());
// Just under a second: rounding down would say 0.
$l2 = new ThrottleKit\Limiter("gcra:1/1s,burst=1", "memory", ["prefix" => "l2:"]);
$l2->check("k");
$s = $l2->check("k");
var_dump($s->retryAfterSeconds() === intdiv($s->retryAfter + 999999999, 1000000000));
var_dump($s->retryAfterSeconds());
foreach (["allowed", "limit", "remaining", "resetAt", "retryAfter", "delay", "degraded"] as $p) {
    $rp = new ReflectionProperty($d, $p);
    echo $p, " ", $rp->getType(), " ", $rp->isReadOnly() ? "readonly" : "writable", "\n";
}
try { $d->allowed = true; } catch (Error $e) { echo get_class($e), ": ", $e->getMessage(), "\n"; }
try { $d->extra = 1; } catch (Error $e) { echo get_class($e), ": ", $e->getMessage(), "\n"; }
try { new ThrottleKit\Decision(); } catch (Error $e) { echo get_class($e), ": ", $e->getMessage(), "\n"; }
try { clone $d; } catch (Error $e) { echo get_class($e), ": ", $e->getMessage(), "\n"; }
try { serialize($d); } catch (Exception $e) { echo get_class($e), ": ", $e->getMessage(), "\n"; }
try { serialize($l); } catch (Exception $e) { echo get_class($e), ": ", $e->getMessage(), "\n"; }
// A Decision outlives its Limiter.
$d2 = (new ThrottleKit\Limiter("gcra:5/s"))->check("z");
gc_collect_cycles();
var_dump($d2->remaining, count($d2->headers("legacy")) >= 3);
?>
--EXPECT--
bool(false)
bool(true)
int(3600)
int(0)
bool(true)
int(1)
allowed bool readonly
limit int readonly
remaining int readonly
resetAt int readonly
retryAfter int readonly
delay int readonly
degraded bool readonly
Error: Cannot modify readonly property ThrottleKit\Decision::$allowed
Error: Cannot create dynamic property ThrottleKit\Decision::$extra
Error: Call to private ThrottleKit\Decision::__construct() from global scope
Error: Trying to clone an uncloneable object of class ThrottleKit\Decision
Exception: Serialization of 'ThrottleKit\Decision' is not allowed
Exception: Serialization of 'ThrottleKit\Limiter' is not allowed
int(4)
bool(true)
