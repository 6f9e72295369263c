--TEST--
INI: throttlekit.default_store and throttlekit.fail are defaults; a bad fail value is refused with a startup warning
--EXTENSIONS--
throttlekit
--INI--
throttlekit.default_store=shm:initest
throttlekit.fail=sometimes
--SKIPIF--
<?php if (!getenv("TK_SHM_DIR")) die("skip TK_SHM_DIR not set (run through make check)"); ?>
--FILE--
<?php
// SPDX-License-Identifier: BSD-2-Clause
var_dump(ini_get("throttlekit.default_store"), ini_get("throttlekit.fail"), ini_get("throttlekit.zone_owner"));
$l = new ThrottleKit\Limiter("gcra:1/1h,burst=2");
$l->check("k");
var_dump(file_exists(getenv("TK_SHM_DIR") . "/throttlekit.initest"));
// Scripts cannot change them (SYSTEM|PERDIR: php.ini and php_admin_value).
var_dump(ini_set("throttlekit.fail", "open"), ini_set("throttlekit.default_store", "memory"));
// An explicit store wins over the default.
var_dump((new ThrottleKit\Limiter("gcra:1/1h,burst=2", "memory"))->check("k")->remaining);
var_dump((new ThrottleKit\Limiter("gcra:1/1h,burst=2", null))->check("k")->remaining);
?>
--EXPECT--
Warning: PHP Startup: throttlekit.fail=sometimes is not error, open or closed: ignored, throttlekit.fail stays error in Unknown on line 0
string(11) "shm:initest"
string(5) "error"
string(0) ""
bool(true)
bool(false)
bool(false)
int(1)
int(0)
