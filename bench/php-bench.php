<?php
// ns per check from PHP, in one run: the extension on a zone and on the
// memory store, next to the GCRA PHP users write on APCu (apcu_fetch +
// apcu_cas, retried), on the same policy and keys.  bench/php.sh runs it.
//   php php-bench.php CHECKS ROUNDS
// Each figure is ns per check (the loop included: the "loop" row), the
// median of ROUNDS rounds with the min-max; the denials show every engine
// enforced the limit (the allow path is what is measured: 1e9/s).
$checks = (int)($argv[1] ?? 1000000);
$rounds = (int)($argv[2] ?? 5);
$keys = [];
for ($i = 0; $i < 100; $i++)
    $keys[] = sprintf("k:%08x", $i);

// GCRA on APCu, as in the usual PHP recipes: one integer TAT per key,
// compare-and-swap until it sticks.  $emission and $tolerance in ns.
function apcu_gcra(string $key, int $emission, int $tolerance): bool {
    for (;;) {
        $now = hrtime(true);
        $tat = apcu_fetch($key, $found);
        if (!$found) {
            if (apcu_add($key, $now + $emission, 3600))
                return true;
            continue;
        }
        $new = max($tat, $now) + $emission;
        if ($new - $now > $tolerance)
            return false;
        if (apcu_cas($key, $tat, $new))
            return true;
    }
}

$engines = [
    "loop" => function (int $n) use ($keys) {
        $d = 0;
        for ($i = 0; $i < $n; $i++)
            $d += $keys[$i % 100] !== "";
        return $n - $d;
    },
];
foreach (["zone" => "shm:phpbench" . getmypid(), "memory" => "memory"] as $name => $spec) {
    $engines["throttlekit-$name"] = function (int $n) use ($keys, $spec) {
        $l = new ThrottleKit\Limiter("gcra:1000000000/1s,burst=1000000000", $spec);
        $denied = 0;
        for ($i = 0; $i < $n; $i++)
            $denied += !$l->check($keys[$i % 100])->allowed;
        return $denied;
    };
}
// A Limiter per check, as a script that builds one per request does: the
// per-process cache makes that a hash lookup.
$engines["throttlekit-zone-new"] = function (int $n) use ($keys) {
    $spec = "shm:phpbench" . getmypid();
    $denied = 0;
    for ($i = 0; $i < $n; $i++)
        $denied += !(new ThrottleKit\Limiter("gcra:1000000000/1s,burst=1000000000", $spec))
            ->check($keys[$i % 100])->allowed;
    return $denied;
};
if (function_exists("apcu_fetch") && apcu_enabled()) {
    $engines["apcu-gcra"] = function (int $n) use ($keys) {
        $denied = 0;
        for ($i = 0; $i < $n; $i++)
            $denied += !apcu_gcra($keys[$i % 100], 1, 1000000000);
        return $denied;
    };
}

printf("%-20s %10s %21s %8s\n", "engine", "ns/check", "min-max", "denied");
foreach ($engines as $name => $run) {
    $run(10000); // warm: the first check of a zone maps it
    $times = [];
    $denied = 0;
    for ($r = 0; $r < $rounds; $r++) {
        $t = hrtime(true);
        $denied += $run($checks);
        $times[] = (hrtime(true) - $t) / $checks;
    }
    sort($times);
    printf("%-20s %10.1f %10.1f-%-10.1f %8d\n", $name, $times[intdiv($rounds, 2)],
        $times[0], $times[$rounds - 1], $denied);
}
if (!isset($engines["apcu-gcra"]))
    echo "apcu-gcra: skipped (no APCu: apt-get install php8.2-apcu)\n";
echo "redis-lua: skipped (libthrottlekit has no Redis store yet, and a benchmark sends no traffic off this host)\n";
