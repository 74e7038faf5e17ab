/*
 * test_frames.c - the frame model's names (unwind/frames.h): each frame
 * kind has the name `coreq stack --format json` prints it under, and a
 * value outside the enum reads as native rather than as garbage.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "unwind/frames.h"

static void test_kind_names(void **state)
{
	(void)state;
	assert_string_equal(cq_frame_kind_name(CQ_FRAME_NATIVE), "native");
	assert_string_equal(cq_frame_kind_name(CQ_FRAME_INLINE), "inline");
	assert_string_equal(cq_frame_kind_name(CQ_FRAME_ASYNC), "async");
	assert_string_equal(cq_frame_kind_name((enum cq_frame_kind)77), "native");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kind_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
