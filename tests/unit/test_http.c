/*
 * test_http.c - the HTTP helpers: client keys and the header fields of
 * draft-ietf-httpapi-ratelimit-headers-11.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <throttlekit.h>

#include "asserts.h"

/* --- tk_client_key() ---------------------------------------------------- */

/* @addr under prefixes @v6 and @v4 gives @want. */
static void key_is(const char *addr, unsigned v6, unsigned v4, const char *want)
{
	char buf[64];
	int rc = tk_client_key(addr, v6, v4, buf, sizeof(buf));

	if (rc < 0)
		fail_msg("tk_client_key(\"%s\", %u, %u) = %s, want \"%s\"",
			 addr, v6, v4, tk_strerrorname(rc), want);
	if (strcmp(buf, want) != 0 || (size_t)rc != strlen(want))
		fail_msg("tk_client_key(\"%s\", %u, %u) = \"%s\" (%d), want "
			 "\"%s\"",
			 addr, v6, v4, buf, rc, want);
}

static void key_fails(const char *addr, unsigned v6, unsigned v4)
{
	char buf[64] = "untouched";
	int rc = tk_client_key(addr, v6, v4, buf, sizeof(buf));

	if (rc != -EINVAL)
		fail_msg("tk_client_key(\"%s\", %u, %u) = %d (\"%s\"), want "
			 "EINVAL",
			 addr ? addr : "(null)", v6, v4, rc, buf);
}

static void test_client_key_v6(void **state)
{
	(void)state;
	key_is("2001:db8:1:2:3:4:5:6", 0, 0, "2001:db8:1:2::/64");
	key_is("2001:db8:1:2:ffff:ffff:ffff:ffff", 0, 0, "2001:db8:1:2::/64");
	key_is("2001:DB8:1:2::1", 0, 0, "2001:db8:1:2::/64");
	key_is("2001:db8:1:2:3:4:5:6", 128, 0, "2001:db8:1:2:3:4:5:6/128");
	key_is("2001:db8:1:2:3:4:5:6", 48, 0, "2001:db8:1::/48");
	key_is("2001:db8:1:2:3:4:5:6", 56, 0, "2001:db8:1::/56");
	key_is("2001:db8:1:ff:3:4:5:6", 56, 0, "2001:db8:1::/56");
	key_is("2001:db8:1:1ff:3:4:5:6", 56, 0, "2001:db8:1:100::/56");
	key_is("2001:db8:1:2:3:4:5:6", 1, 0, "::/1");
	key_is("ffff::1", 1, 0, "8000::/1");
	key_is("ffff::1", 7, 0, "fe00::/7");
	key_is("ffff:ffff::1", 17, 0, "ffff:8000::/17");
	key_is("2001:db8:0:0:1:0:0:1", 127, 0, "2001:db8:0:0:1::/127");
	key_is("2001:db8::ff", 127, 0, "2001:db8::fe/127");
	key_is("::1", 0, 0, "::/64");
	key_is("::", 0, 0, "::/64");
	key_is("::1", 128, 0, "::1/128");
	/* The v4 prefix does not apply to IPv6 addresses. */
	key_is("2001:db8:1:2:3:4:5:6", 64, 8, "2001:db8:1:2::/64");
	/* A zone index is dropped (RFC 4007 11). */
	key_is("fe80::1%eth0", 0, 0, "fe80::/64");
	key_is("fe80::1:2:3:4%25", 128, 0, "fe80::1:2:3:4/128");
	key_is("fe80::1%en0.1_x~y-z", 0, 0, "fe80::/64");
}

static void test_client_key_v4(void **state)
{
	(void)state;
	key_is("192.0.2.7", 0, 0, "192.0.2.7/32");
	key_is("192.0.2.7", 0, 24, "192.0.2.0/24");
	key_is("192.0.2.7", 0, 31, "192.0.2.6/31");
	key_is("192.0.2.255", 0, 25, "192.0.2.128/25");
	key_is("255.255.255.255", 0, 1, "128.0.0.0/1");
	key_is("127.255.255.255", 0, 1, "0.0.0.0/1");
	key_is("203.0.113.77", 0, 16, "203.0.0.0/16");
	key_is("203.0.113.77", 0, 12, "203.0.0.0/12");
	key_is("203.31.113.77", 0, 12, "203.16.0.0/12");
	key_is("0.0.0.0", 0, 0, "0.0.0.0/32");
	/* The v6 prefix does not apply to IPv4 addresses. */
	key_is("192.0.2.7", 1, 32, "192.0.2.7/32");
	/* IPv4-mapped IPv6: masked and written as IPv4. */
	key_is("::ffff:192.0.2.7", 0, 0, "192.0.2.7/32");
	key_is("::ffff:192.0.2.7", 0, 24, "192.0.2.0/24");
	key_is("::FFFF:c000:0207", 0, 24, "192.0.2.0/24");
	key_is("::ffff:192.0.2.7%eth0", 128, 32, "192.0.2.7/32");
	key_is("0:0:0:0:0:ffff:192.0.2.7", 64, 32, "192.0.2.7/32");
	/* Not mapped: IPv4-compatible (deprecated) and NAT64 stay IPv6. */
	key_is("::192.0.2.7", 128, 8, "::192.0.2.7/128");
	key_is("64:ff9b::192.0.2.7", 96, 8, "64:ff9b::/96");
	key_is("::fffe:192.0.2.7", 128, 8, "::fffe:c000:207/128");
}

static void test_client_key_garbage(void **state)
{
	static const char *const bad[] = {
		"",
		" 192.0.2.7",
		"192.0.2.7 ",
		"192.0.2.7\n",
		"+192.0.2.7",
		"-1.2.3.4",
		"192.0.2",
		"192.0.2.7.1",
		"192.0.2.256",
		"192.0.02.7",
		"0x7f.0.0.1",
		"127.1",
		"1.2.3.4/32",
		"192.0.2.7%eth0",
		"2001:db8::1/64",
		" ::1",
		"::1 ",
		"::1%",
		"::1%eth 0",
		"::1%eth0%1",
		"::1%eth/0",
		"%eth0",
		"1:2:3:4:5:6:7:8:9",
		"1::2::3",
		"12345::1",
		"g::1",
		":",
		"::ffff:192.0.2.256",
		"[::1]",
		"localhost",
		"2001:0db8:0000:0000:0000:0000:0000:0001:",
		/* Longer than any address. */
		"0000:0000:0000:0000:0000:ffff:255.255.255.255x",
		"::1\xff",
	};
	char buf[8] = "x";
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		key_fails(bad[i], 0, 0);
	key_fails(NULL, 0, 0);
	/* Prefixes out of range, whatever the family. */
	key_fails("::1", 129, 0);
	key_fails("192.0.2.7", 129, 0);
	key_fails("192.0.2.7", 0, 33);
	key_fails("::1", 0, 33);
	key_fails("::1", 0xffffffffu, 0);
	assert_rc(tk_client_key("::1", 0, 0, NULL, 1), -EINVAL);
	/* A NULL buffer of length 0 measures, as snprintf(3). */
	assert_rc(tk_client_key("::1", 0, 0, NULL, 0), 5);
	assert_rc(tk_client_key("::1", 0, 0, buf, 0), 5);
	assert_string_equal(buf, "x");
}

/* Every buffer length: snprintf(3)'s truncation and return. */
static void test_client_key_truncates(void **state)
{
	static const char *const addrs[] = { "2001:db8:1:2:3:4:5:6",
					     "::ffff:192.0.2.7", "10.1.2.3" };
	char want[64], buf[64];
	size_t i, len;
	int n;

	(void)state;
	for (i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		n = tk_client_key(addrs[i], 128, 32, want, sizeof(want));
		assert_true(n > 0 && (size_t)n < sizeof(want));
		for (len = 1; len <= (size_t)n + 1; len++) {
			memset(buf, '#', sizeof(buf));
			assert_rc(tk_client_key(addrs[i], 128, 32, buf, len),
				  n);
			assert_int_equal(strlen(buf), len - 1 < (size_t)n
							      ? len - 1
							      : (size_t)n);
			assert_memory_equal(buf, want, strlen(buf));
			assert_int_equal(buf[len], '#');
		}
	}
}

/* Every v4 prefix on an all-ones address and on a random-looking one. */
static void test_client_key_every_prefix(void **state)
{
	char want[64];
	unsigned p;
	uint32_t m, a = 0xc0a8f5b7; /* 192.168.245.183 */

	(void)state;
	for (p = 1; p <= 32; p++) {
		m = p == 32 ? 0xffffffffu : ~(0xffffffffu >> p);
		snprintf(want, sizeof(want), "%u.%u.%u.%u/%u", (a & m) >> 24,
			 ((a & m) >> 16) & 0xff, ((a & m) >> 8) & 0xff,
			 (a & m) & 0xff, p);
		key_is("192.168.245.183", 0, p, want);
		key_is("::ffff:192.168.245.183", 0, p, want);
	}
	for (p = 1; p <= 128; p++) {
		char addr[64], canon[64], got[80], *s = want;
		unsigned char b[16];
		unsigned i, bits;

		/* ffff:...:ffff masked to p bits, written out in full. */
		snprintf(addr, sizeof(addr), "%s",
			 "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
		for (i = 0; i < 8; i++) {
			bits = p > 16 * i ? p - 16 * i : 0;
			bits = bits > 16 ? 16 : bits;
			s += sprintf(s, "%s%x", i ? ":" : "",
				     bits ? (0xffffu << (16 - bits)) & 0xffffu
					  : 0);
		}
		/* Compare with the canonical text (RFC 5952) of want. */
		assert_int_equal(inet_pton(AF_INET6, want, b), 1);
		assert_non_null(inet_ntop(AF_INET6, b, canon, sizeof(canon)));
		snprintf(got, sizeof(got), "%s/%u", canon, p);
		key_is(addr, p, 0, got);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_client_key_v6),
		cmocka_unit_test(test_client_key_v4),
		cmocka_unit_test(test_client_key_garbage),
		cmocka_unit_test(test_client_key_truncates),
		cmocka_unit_test(test_client_key_every_prefix),
	};

	return cmocka_run_group_tests_name("http", tests, NULL, NULL);
}
