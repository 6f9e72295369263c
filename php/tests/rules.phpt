--TEST--
Zones: each policy (named by its prefix) registers in the zone's rule directory; per-policy checks and denials add up over processes; throttlectl resets one client of a policy by its key
--EXTENSIONS--
throttlekit
--SKIPIF--
<?php if (!getenv("TK_SHM_DIR") || !getenv("TK_PHP_EXT") || !getenv("TK_CTL")) die("skip TK_SHM_DIR, TK_PHP_EXT or TK_CTL not set (run through make check)"); ?>
--FILE--
<?php
// SPDX-License-Identifier: BSD-2-Clause
$zone = "rulestest" . getmypid();
$api = 'new ThrottleKit\Limiter("gcra:1/1h,burst=5", "shm:' . $zone . '", ["prefix" => "api:"])';
$login = 'new ThrottleKit\Limiter("fixed-window:3/1h", "shm:' . $zone . '", ["prefix" => "login."])';
$code = '$a = ' . $api . '; $b = ' . $login . ';'
      . 'for ($i = 0; $i < 4; $i++) { $a->check("ip:192.0.2.1"); $b->check("alice"); }';
eval($code);                          // 4 + 4 here
$php = getenv("TEST_PHP_EXECUTABLE");
$ext = escapeshellarg(getenv("TK_PHP_EXT"));
for ($p = 0; $p < 2; $p++)            // 2 x (4 + 4) in other processes
    shell_exec(escapeshellarg($php) . " -n -d extension=$ext -r " . escapeshellarg($code));
$a->check("ip:192.0.2.2");            // 13 api checks, 12 login checks
$ctl = escapeshellarg(getenv("TK_CTL"));
echo shell_exec("$ctl stats $zone | grep '^rule=' | sort");
// Reset one client of "api" by its key: refused before, admitted after;
// another client of the same policy keeps its state.
for ($i = 0; $i < 5; $i++) $a->check("ip:192.0.2.2");
var_dump($a->check("ip:192.0.2.1")->allowed, $a->check("ip:192.0.2.2")->allowed);
echo shell_exec("$ctl reset $zone --rule api --client ip:192.0.2.1");
var_dump($a->check("ip:192.0.2.1")->allowed, $a->check("ip:192.0.2.2")->allowed);
echo shell_exec("$ctl reset $zone --rule nope --client x 2>&1");
// A name with a quote, a backslash and a newline: escaped in the
// Prometheus label as the exposition format asks, and in JSON.
$odd = new ThrottleKit\Limiter("gcra:1/1h", "shm:$zone", ["prefix" => "a\"b\\c\nd:"]);
$odd->check("x");
echo shell_exec("$ctl stats $zone --prometheus | grep -F "
                . escapeshellarg('rule="a\"b'));
echo shell_exec("$ctl stats $zone --json | grep -o "
                . escapeshellarg('{"rule":"a\\\\"[^}]*}'));
?>
--EXPECTF--
rule=api checks=13 denies=7
rule=login checks=12 denies=9
bool(false)
bool(false)
reset=ip:192.0.2.1 rule=api keys=1
bool(true)
bool(false)
throttlectl: rulestest%d: no rule 'nope' in the zone; its rules: %s
throttlekit_checks_total{zone="rulestest%d",rule="a\"b\\c\nd"} 1
throttlekit_denies_total{zone="rulestest%d",rule="a\"b\\c\nd"} 0
{"rule":"a\"b\\c\u000ad","checks":1,"denies":0}
