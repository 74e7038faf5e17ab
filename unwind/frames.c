/*
 * frames.c - names of the frame model's values (see frames.h).
 */
#include "unwind/frames.h"

const char *cq_frame_kind_name(enum cq_frame_kind kind)
{
	switch (kind) {
	case CQ_FRAME_INLINE:
		return "inline";
	case CQ_FRAME_ASYNC:
		return "async";
	case CQ_FRAME_PYTHON:
		return "python";
	case CQ_FRAME_NATIVE:
	default:
		return "native";
	}
}
