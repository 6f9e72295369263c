--TEST--
Zones: processes share one limit; a process maps a zone once however many Limiters it builds
--EXTENSIONS--
throttlekit
--SKIPIF--
<?php if (!getenv("TK_SHM_DIR") || !getenv("TK_PHP_EXT")) die("skip TK_SHM_DIR or TK_PHP_EXT not set (run through make check)"); ?>
--FILE--
<?php
// SPDX-License-Identifier: BSD-2-Clause
$zone = "zonetest" . getmypid();
$policy = "gcra:1/1h,burst=10";
for ($i = 0; $i < 200; $i++)
    $d = (new ThrottleKit\Limiter($policy, "shm:$zone"))->check("k");
var_dump($d->allowed);
$maps = 0;
foreach (file("/proc/self/maps") as $line)
    $maps += str_contains($line, "throttlekit.$zone");
var_dump($maps);
// Another process sees what this one consumed.
$l = new ThrottleKit\Limiter($policy, "shm:$zone");
$l->reset("k");
for ($i = 0; $i < 6; $i++) $l->check("k");
$php = getenv("TEST_PHP_EXECUTABLE");
$code = '$l = new ThrottleKit\Limiter("' . $policy . '", "shm:' . $zone . '");'
      . '$n = 0; for ($i = 0; $i < 10; $i++) $n += $l->check("k")->allowed; echo $n;';
$cmd = escapeshellarg($php) . " -n -d extension=" . escapeshellarg(getenv("TK_PHP_EXT")) . " -r " . escapeshellarg($code);
var_dump(shell_exec($cmd));
var_dump($l->peek("k")->remaining);
// The memory store is per process: the other process starts fresh.
$code = str_replace("shm:$zone", "memory", $code);
$cmd = escapeshellarg($php) . " -n -d extension=" . escapeshellarg(getenv("TK_PHP_EXT")) . " -r " . escapeshellarg($code);
var_dump(shell_exec($cmd));
?>
--EXPECT--
bool(false)
int(1)
string(1) "4"
int(0)
string(2) "10"
