<?php

/**
 * SPDX-License-Identifier: BSD-2-Clause
 * @generate-class-entries
 * The PHP API of libthrottlekit; docs/php.md describes it.
 */

namespace ThrottleKit {

    /**
     * @strict-properties
     * @not-serializable
     */
    final class Limiter
    {
        public function __construct(string $policy, #[\SensitiveParameter] ?string $store = null, array $options = []) {}

        public function check(string $key, int $cost = 1): Decision {}

        public function peek(string $key): Decision {}

        public function reset(string $key): void {}

        /** @return array<int|string, Decision> */
        public function checkMany(array $keysOrRequests): array {}

        public function wait(string $key, int $cost = 1): Decision {}
    }

    /**
     * @strict-properties
     * @not-serializable
     */
    final class Decision
    {
        public readonly bool $allowed;
        public readonly int $limit;
        public readonly int $remaining;
        public readonly int $resetAt;
        public readonly int $retryAfter;
        public readonly int $delay;
        public readonly bool $degraded;

        private function __construct() {}

        public function retryAfterSeconds(): int {}

        /** @return array<string, string> */
        public function headers(string $style = "ietf"): array {}
    }

    class Exception extends \InvalidArgumentException
    {
    }

    class StoreException extends \RuntimeException
    {
    }
}
