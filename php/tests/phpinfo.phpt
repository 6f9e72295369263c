--TEST--
phpinfo(): the library version, the license and the stores this process uses
--EXTENSIONS--
throttlekit
--FILE--
<?php
// SPDX-License-Identifier: BSD-2-Clause
$l = new ThrottleKit\Limiter("gcra:10/s");
$l->check("a");
$l->check("b");
ob_start();
phpinfo(INFO_MODULES);
$s = ob_get_clean();
preg_match('/^throttlekit support => enabled$/m', $s, $m); var_dump($m[0] ?? null);
preg_match('/^library version \(run time\) => (\S+)$/m', $s, $m); var_dump(preg_match('/^\d+\.\d+\.\d+$/', $m[1] ?? ""));
preg_match('/^license => (.*)$/m', $s, $m); var_dump($m[1] ?? null);
preg_match('/^memory => (.*)$/m', $s, $m); var_dump($m[1] ?? null);
preg_match('/^throttlekit.fail => (.*)$/m', $s, $m); var_dump($m[1] ?? null);
preg_match('/^throttlekit.default_store => (.*)$/m', $s, $m); var_dump($m[1] ?? null);
// Without the setting, the CLI's default: this process alone.
preg_match('/^default store => (.*)$/m', $s, $m); var_dump($m[1] ?? null);
?>
--EXPECT--
string(30) "throttlekit support => enabled"
int(1)
string(12) "BSD-2-Clause"
string(6) "2 keys"
string(14) "error => error"
string(20) "no value => no value"
string(6) "memory"
