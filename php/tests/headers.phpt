--TEST--
Decision::headers(): RateLimit fields (ietf), X-RateLimit (legacy), both, and Retry-After on a denial
--EXTENSIONS--
throttlekit
--FILE--
<?php
// SPDX-License-Identifier: BSD-2-Clause
$l = new ThrottleKit\Limiter("gcra:1/1h,burst=2", "memory", ["prefix" => "api:"]);
$d = $l->check("k");
foreach (["ietf", "legacy", "both"] as $style) {
    echo "$style:\n";
    foreach ($d->headers($style) as $name => $value)
        echo "  $name: $value\n";
}
var_dump($d->headers() === $d->headers("ietf"));
$l->check("k");
$deny = $l->check("k");
echo "denied:\n";
foreach ($deny->headers("both") as $name => $value)
    echo "  $name: $value\n";
var_dump((int)$deny->headers()["Retry-After"] === $deny->retryAfterSeconds());
// Without a prefix the policy is named "default".
$h = (new ThrottleKit\Limiter("gcra:10/s", "memory", ["prefix" => ""]))->check("x")->headers();
echo $h["RateLimit-Policy"], "\n";
// all(): one member per dimension, from check()'s per-dimension decisions.
$c = new ThrottleKit\Limiter("all(gcra:10/1s,burst=10,fixed-window:100/1h)", "memory", ["prefix" => "c:"]);
$d = $c->check("u");
var_dump($d->remaining);
foreach ($d->headers() as $name => $value)
    echo "$name: $value\n";
// Without them (peek()) only the X-RateLimit fields.
var_dump(array_keys($c->peek("u")->headers("both")));
// any() too; check() counts as peek() sees it (the group of one keeps the
// states a plain check would).
$a = new ThrottleKit\Limiter("any(gcra:1/1h,burst=2,fixed-window:3/1h)", "memory", ["prefix" => "a:"]);
for ($i = 0; $i < 3; $i++)
    $d = $a->check("u");
var_dump($d->allowed, $a->check("u")->allowed, $a->peek("u")->allowed);
foreach ($d->headers() as $name => $value)
    echo "$name: $value\n";
var_dump($c->peek("u")->remaining);
?>
--EXPECTF--
ietf:
  RateLimit-Policy: "api";q=1;w=3600
  RateLimit: "api";r=1;t=%d
legacy:
  X-RateLimit-Limit: 2
  X-RateLimit-Remaining: 1
  X-RateLimit-Reset: %d
both:
  RateLimit-Policy: "api";q=1;w=3600
  RateLimit: "api";r=1;t=%d
  X-RateLimit-Limit: 2
  X-RateLimit-Remaining: 1
  X-RateLimit-Reset: %d
bool(true)
denied:
  RateLimit-Policy: "api";q=1;w=3600
  RateLimit: "api";r=0;t=%d
  X-RateLimit-Limit: 2
  X-RateLimit-Remaining: 0
  X-RateLimit-Reset: %d
  Retry-After: 3600
bool(true)
"default";q=10;w=1
int(9)
RateLimit-Policy: "c.0";q=10;w=1, "c.1";q=100;w=3600
RateLimit: "c.0";r=9;t=1, "c.1";r=99;t=%d
array(3) {
  [0]=>
  string(17) "X-RateLimit-Limit"
  [1]=>
  string(21) "X-RateLimit-Remaining"
  [2]=>
  string(17) "X-RateLimit-Reset"
}
bool(true)
bool(false)
bool(false)
RateLimit-Policy: "a.0";q=1;w=3600, "a.1";q=3;w=3600
RateLimit: "a.0";r=0;t=%d, "a.1";r=0;t=%d
int(9)
