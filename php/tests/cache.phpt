--TEST--
The per-process cache: one library limiter per set of arguments, at most 256; past that, limiters per object
--EXTENSIONS--
throttlekit
--FILE--
<?php
// SPDX-License-Identifier: BSD-2-Clause
function cached(): string {
    ob_start();
    phpinfo(INFO_MODULES);
    preg_match('/^cached limiters \(this process\) => (\d+)$/m', ob_get_clean(), $m);
    return $m[1] ?? "?";
}
// The same arguments, however many objects: one entry, one state.
for ($i = 0; $i < 50; $i++)
    $d = (new ThrottleKit\Limiter("gcra:1/1h,burst=100"))->check("k");
echo cached(), " ", $d->remaining, "\n";
// The options are part of the arguments.
new ThrottleKit\Limiter("gcra:1/1h,burst=100", "memory", ["fail" => "open"]);
new ThrottleKit\Limiter("gcra:1/1h,burst=100", "memory", ["timeout" => 5]);
new ThrottleKit\Limiter("gcra:1/1h,burst=100", "memory", ["timeout" => 5]);
echo cached(), "\n";
// 300 prefixes: 256 cached, the rest per object, all working.
$n = 0;
for ($i = 0; $i < 300; $i++) {
    $l = new ThrottleKit\Limiter("gcra:1/1h,burst=2", "memory", ["prefix" => "p$i:"]);
    $l->check("k");
    $n += $l->check("k")->remaining === 0 && !$l->check("k")->allowed;
}
echo cached(), " ", $n, "\n";
// An uncached limiter outlives its object through its decisions.
$d = (new ThrottleKit\Limiter("gcra:1/1h,burst=2", "memory", ["prefix" => "late:"]))->check("k");
gc_collect_cycles();
echo $d->remaining, " ", count($d->headers()), "\n";
?>
--EXPECT--
1 50
3
256 300
1 2
