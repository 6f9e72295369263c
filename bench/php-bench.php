<?php
// SPDX-License-Identifier: BSD-2-Clause
// ns per check from PHP, in one run: the extension on a zone and on the
// memory store, next to the GCRA PHP users write on APCu (apcu_fetch +
// apcu_cas, retried), on the same policy and keys; with a Redis server,
// the extension on it next to the Lua GCRA PHP users send it with
// phpredis (EVALSHA).  bench/php.sh runs it.
//   php php-bench.php CHECKS ROUNDS [REDIS-HOST:PORT]
// Redis engines do CHECKS/100 checks a round (at least 1000): each is a
// round trip.
// Each figure is ns per check (the loop included: the "loop" row), the
// median of ROUNDS rounds with the min-max; the denials show every engine
// enforced the limit (the allow path is what is measured: 1e9/s).
$checks = (int)($argv[1] ?? 1000000);
$rounds = (int)($argv[2] ?? 5);
$redis = $argv[3] ?? "";
$redis_checks = max(1000, intdiv($checks, 100));
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

// GCRA in Lua, as the PHP recipes send it (after rwz/redis-gcra): the
// server's clock in microseconds, one TAT per key, with a TTL.
const LUA_GCRA = <<<'LUA'
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local emission, tolerance = tonumber(ARGV[1]), tonumber(ARGV[2])
local tat = tonumber(redis.call("GET", KEYS[1])) or now
if tat < now then tat = now end
local new = tat + emission
if new - now > tolerance then return 0 end
redis.call("SET", KEYS[1], new, "PX", math.ceil((new - now) / 1000) + 1)
return 1
LUA;

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
if ($redis !== "") {
    $engines["throttlekit-redis"] = function (int $n) use ($keys, $redis) {
        $l = new ThrottleKit\Limiter("gcra:1000000000/1s,burst=1000000000", "redis://$redis");
        $denied = 0;
        for ($i = 0; $i < $n; $i++)
            $denied += !$l->check($keys[$i % 100])->allowed;
        return $denied;
    };
}
if ($redis !== "" && class_exists("Redis")) {
    [$host, $port] = explode(":", $redis);
    $r = new Redis();
    $r->connect($host, (int)$port, 1.0);
    $sha = $r->script("load", LUA_GCRA);
    $engines["phpredis-lua-gcra"] = function (int $n) use ($keys, $r, $sha) {
        $denied = 0;
        for ($i = 0; $i < $n; $i++)
            // 1 us per check, a 1000 s tolerance: the allow path.
            $denied += !$r->evalSha($sha, ["lua:" . $keys[$i % 100], 1, 1000000000], 1);
        return $denied;
    };
}
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
    $n = str_contains($name, "redis") ? $redis_checks : $checks;
    $run(min($n, 10000)); // warm: the first check maps a zone or connects
    $times = [];
    $denied = 0;
    for ($round = 0; $round < $rounds; $round++) {
        $t = hrtime(true);
        $denied += $run($n);
        $times[] = (hrtime(true) - $t) / $n;
    }
    sort($times);
    printf("%-20s %10.1f %10.1f-%-10.1f %8d\n", $name, $times[intdiv($rounds, 2)],
        $times[0], $times[$rounds - 1], $denied);
}
if (!isset($engines["apcu-gcra"]))
    echo "apcu-gcra: skipped (no APCu: apt-get install php8.2-apcu)\n";
if ($redis === "")
    echo "throttlekit-redis, phpredis-lua-gcra: skipped (no redis-server: apt-get install redis-server)\n";
elseif (!isset($engines["phpredis-lua-gcra"]))
    echo "phpredis-lua-gcra: skipped (no phpredis: apt-get install php8.2-redis)\n";
