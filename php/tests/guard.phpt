--TEST--
Guard: the extension under test is loaded (the other tests skip without it)
--FILE--
<?php
// SPDX-License-Identifier: BSD-2-Clause
var_dump(extension_loaded("throttlekit"));
var_dump(class_exists("ThrottleKit\\Limiter"));
?>
--EXPECT--
bool(true)
bool(true)
