/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Helpers shared by the ib_core KUnit suites.
 */
#ifndef IB_CORE_KUNIT_H
#define IB_CORE_KUNIT_H

#include <kunit/test.h>
#include <linux/types.h>

/*
 * Expect @len bytes at @got to equal those at @want; on a mismatch, name the
 * first differing byte and both values, with @what for context.
 */
static inline void ib_kunit_expect_bytes(struct kunit *test, const char *what,
					 const void *got, const void *want,
					 size_t len)
{
	const u8 *g = got, *w = want;
	size_t i;

	for (i = 0; i < len; i++)
		if (g[i] != w[i])
			break;
	KUNIT_EXPECT_TRUE_MSG(test, i == len,
			      "%s: byte %zu is 0x%02x, expected 0x%02x",
			      what, i, i < len ? g[i] : 0, i < len ? w[i] : 0);
}

#endif /* IB_CORE_KUNIT_H */
