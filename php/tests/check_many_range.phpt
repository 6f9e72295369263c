--TEST--
Limiter::checkMany(): a cost the policy never admits throws before anything is consumed
--EXTENSIONS--
throttlekit
--FILE--
<?php
// SPDX-License-Identifier: BSD-2-Clause
foreach (["gcra:1/1h,burst=3", "all(gcra:1/1h,burst=3,fixed-window:10/1h)"] as $policy) {
    $l = new ThrottleKit\Limiter($policy);
    try {
        $l->checkMany(["d", "x" => ["key" => "e", "cost" => 4], "f"]);
        echo "no exception\n";
    } catch (ThrottleKit\Exception $e) {
        echo $e->getCode() === 34 ? "ERANGE" : $e->getCode(), ": ", $e->getMessage(), "\n";
    }
    // Nothing of the batch was consumed, before or after the bad request.
    var_dump($l->peek("d")->remaining, $l->peek("f")->remaining);
    // The burst itself is admissible.
    var_dump($l->checkMany([["key" => "d", "cost" => 3]])[0]->allowed);
}
?>
--EXPECT--
ERANGE: checkMany on "memory", request 1 (nothing checked): Cost exceeds what the policy can ever admit (ERANGE): the cost exceeds what the policy can ever admit
int(3)
int(3)
bool(true)
ERANGE: checkMany on "memory", request 1 (nothing checked): Cost exceeds what the policy can ever admit (ERANGE): the cost exceeds what the policy can ever admit
int(3)
int(3)
bool(true)
