--TEST--
fail: what the fail policy absorbs is logged, a line per store every 10 s with counts and the reason, and shown by phpinfo()
--EXTENSIONS--
throttlekit
--SKIPIF--
<?php if (!getenv("TK_SHM_DIR")) die("skip TK_SHM_DIR not set (run through make check)"); ?>
--INI--
error_log={PWD}/fail_log.log
--FILE--
<?php
// SPDX-License-Identifier: BSD-2-Clause
use ThrottleKit\Limiter;

$log = __DIR__ . "/fail_log.log";
@unlink($log);
// A zone this process's trust rules refuse: writable by every user.
$zone = "logged" . getmypid();
$path = getenv("TK_SHM_DIR") . "/throttlekit.$zone";
(new Limiter("gcra:10/s", "shm:$zone.made"))->peek("x");
copy(getenv("TK_SHM_DIR") . "/throttlekit.$zone.made", $path);
chmod($path, 0666);
function lines($log) {
    $out = [];
    foreach (file($log) ?: [] as $l)
        if (str_contains($l, "throttlekit:"))
            $out[] = substr($l, strpos($l, "throttlekit:"));
    return $out;
}
// 6 checks at burst 3, all admitted by fail "open": one line.
$n = 0;
for ($i = 0; $i < 6; $i++)
    $n += (new Limiter("gcra:1/1h,burst=3", "shm:$zone", ["fail" => "open"]))->check("k")->allowed;
echo "admitted $n of 6\n";
echo implode("", lines($log));
// phpinfo() counts them all, with the reason.
ob_start();
phpinfo(INFO_MODULES);
preg_match('/^failures of "shm:logged\d+" => (.*)$/m', ob_get_clean(), $m);
echo $m[1] ?? "no phpinfo row", "\n";
// 10 s on, the next failure reports what was absorbed since the line.
usleep(10100000);
(new Limiter("gcra:1/1h,burst=3", "shm:$zone", ["fail" => "closed"]))->check("k");
echo lines($log)[1] ?? "no second line\n";
echo count(lines($log)), " lines\n";
?>
--EXPECTF--
admitted 6 of 6
throttlekit: store "shm:logged%d" failed: %s (EACCES): it is writable by every user (mode 0666)%s; checks answered by the fail policy (first failure): 1 admitted by fail=open, 0 denied by fail=closed; 1 in all in process %d (at most a line per store every 10 s)
6 checks answered by the fail policy (6 admitted, 0 denied); the last 0 s ago: %s (EACCES): it is writable by every user (mode 0666)%s
throttlekit: store "shm:logged%d" failed: %s (EACCES): it is writable by every user (mode 0666)%s; checks answered by the fail policy (in the last 10 s): 5 admitted by fail=open, 1 denied by fail=closed; 7 in all in process %d (at most a line per store every 10 s)
2 lines
