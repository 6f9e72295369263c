<?php
// SPDX-License-Identifier: BSD-2-Clause
// The request handler of fpm.sh: one operation on one key of the pool's
// default store (throttlekit.default_store, set per pool), answered as
// "pid=... allowed=... remaining=..." so the driver can count.  (In fpm/:
// phpize --clean removes tests/*.php.)
$op = $_GET["op"] ?? "check";
$key = $_GET["key"] ?? "k";
try {
    $opts = isset($_GET["fail"]) ? ["fail" => $_GET["fail"]] : [];
    $l = new ThrottleKit\Limiter($_GET["policy"] ?? "gcra:1/1h,burst=50", $_GET["store"] ?? null, $opts);
    switch ($op) {
    case "check":
        $d = $l->check($key);
        break;
    case "peek":
        $d = $l->peek($key);
        break;
    case "reset":
        $l->reset($key);
        $d = $l->peek($key);
        break;
    case "victim":
        // Admitted, then killed by the driver before it answers.
        $d = $l->check($key);
        file_put_contents(getenv("TK_TEST_DIR") . "/victim.pid", getmypid() . " " . (int)$d->allowed . "\n");
        sleep(60);
        break;
    case "maps":
        $n = 0;
        foreach (file("/proc/self/maps") as $line)
            $n += str_contains($line, getenv("TK_SHM_DIR") . "/throttlekit.");
        printf("pid=%d zone_mappings=%d\n", getmypid(), $n);
        exit;
    }
    printf("pid=%d allowed=%d remaining=%d degraded=%d\n", getmypid(),
        $d->allowed, $d->remaining, $d->degraded);
} catch (Throwable $e) {
    printf("pid=%d error=%s: %s\n", getmypid(), get_class($e), $e->getMessage());
}
