--TEST--
A policy changed on live keys (a deploy, a reload): a decision every time, counts kept where tk_limiter_open(3) says, at most one fresh budget
--EXTENSIONS--
throttlekit
--SKIPIF--
<?php if (!getenv("TK_SHM_DIR")) die("skip TK_SHM_DIR not set (run through make check)"); ?>
--FILE--
<?php
// SPDX-License-Identifier: BSD-2-Clause
use ThrottleKit\Limiter;

$zone = "shm:changetest" . getmypid();
// Units admitted of 20 at once, and whether any was degraded.
function take(string $policy, string $store): string {
    $l = new Limiter($policy, $store, ["fail" => "closed"]);
    $n = 0;
    $degraded = false;
    for ($i = 0; $i < 20; $i++) {
        $d = $l->check("client");
        $n += $d->allowed;
        $degraded = $degraded || $d->degraded;
    }
    return "$policy: $n" . ($degraded ? " degraded" : "") . "\n";
}
foreach ([$zone, "memory"] as $store) {
    // A log's limit: a fresh log of 10; back to 5: still full.
    echo take("sliding-log:5/1h", $store);
    echo take("sliding-log:10/1h", $store);
    echo take("sliding-log:5/1h", $store);
    // A composite's second dimension: the gcra's TAT is kept.
    $l = new Limiter("all(gcra:5/1h,quota:5/day)", $store);
    for ($i = 0; $i < 3; $i++) $l->check("client");
    echo take("all(gcra:5/1h,fixed-window:5/1h)", $store);
    // A window's limit: its count is kept.
    echo take("fixed-window:3/1h", $store);
    echo take("fixed-window:8/1h", $store);
}
?>
--EXPECT--
sliding-log:5/1h: 5
sliding-log:10/1h: 10
sliding-log:5/1h: 0
all(gcra:5/1h,fixed-window:5/1h): 2
fixed-window:3/1h: 3
fixed-window:8/1h: 5
sliding-log:5/1h: 5
sliding-log:10/1h: 10
sliding-log:5/1h: 0
all(gcra:5/1h,fixed-window:5/1h): 2
fixed-window:3/1h: 3
fixed-window:8/1h: 5
