--TEST--
fork(): a child builds its own stores (the cache is per process); inherited Limiters keep working
--EXTENSIONS--
throttlekit
--SKIPIF--
<?php if (!function_exists("pcntl_fork")) die("skip no pcntl"); ?>
--FILE--
<?php
// SPDX-License-Identifier: BSD-2-Clause
$policy = "gcra:1/1h,burst=5";
$l = new ThrottleKit\Limiter($policy);
for ($i = 0; $i < 3; $i++) $l->check("k");
$pipe = [];
$pid = pcntl_fork();
if ($pid === 0) {
    // A new Limiter: this process's own memory store, fresh.
    $fresh = (new ThrottleKit\Limiter($policy))->check("k")->remaining;
    // The inherited object: its copy of the parent's store.
    $inherited = $l->check("k")->remaining;
    ob_start();
    phpinfo(INFO_MODULES);
    preg_match('/^memory => (.*)$/m', ob_get_clean(), $m);
    echo "child: fresh=$fresh inherited=$inherited store=", $m[1] ?? "-", "\n";
    exit(0);
}
pcntl_waitpid($pid, $status);
echo "parent: ", $l->check("k")->remaining, " exit=", pcntl_wexitstatus($status), "\n";
?>
--EXPECT--
child: fresh=4 inherited=1 store=1 keys
parent: 1 exit=0
