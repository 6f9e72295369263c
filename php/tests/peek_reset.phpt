--TEST--
Limiter::peek() consumes nothing; Limiter::reset() forgets the key
--EXTENSIONS--
throttlekit
--FILE--
<?php
// SPDX-License-Identifier: BSD-2-Clause
$l = new ThrottleKit\Limiter("gcra:1/1h,burst=2", "memory", ["prefix" => "pr:"]);
var_dump($l->peek("k")->remaining);
$l->check("k");
$l->check("k");
$p = $l->peek("k");
var_dump($p->allowed, $p->remaining, $p->retryAfter > 0);
var_dump($l->peek("k")->remaining);
var_dump($l->reset("k"));
var_dump($l->peek("k")->remaining, $l->check("k")->allowed);
// reset() of a key never seen is fine.
$l->reset("never");
echo "ok\n";
?>
--EXPECT--
int(2)
bool(false)
int(0)
bool(true)
int(0)
NULL
int(2)
bool(true)
ok
