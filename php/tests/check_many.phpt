--TEST--
Limiter::checkMany(): keys and requests, the input's keys kept
--EXTENSIONS--
throttlekit
--FILE--
<?php
// SPDX-License-Identifier: BSD-2-Clause
$l = new ThrottleKit\Limiter("gcra:1/1h,burst=3");
$r = $l->checkMany(["a", "b", "x" => ["key" => "a", "cost" => 2], 7 => ["key" => "a"]]);
var_dump(array_keys($r));
foreach ($r as $k => $d)
    echo "$k: ", get_class($d), " ", var_export($d->allowed, true), " ", $d->remaining, "\n";
var_dump($l->checkMany([]));
?>
--EXPECT--
array(4) {
  [0]=>
  int(0)
  [1]=>
  int(1)
  [2]=>
  string(1) "x"
  [3]=>
  int(7)
}
0: ThrottleKit\Decision true 2
1: ThrottleKit\Decision true 2
x: ThrottleKit\Decision true 0
7: ThrottleKit\Decision false 0
array(0) {
}
