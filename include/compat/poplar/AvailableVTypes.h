// Poplar's <poplar/AvailableVTypes.h> for codelets: which Vector layouts the target supports.
// Aspen accepts every layout (and ignores it), so all are available.
#pragma once

#define VECTOR_AVAIL_SCALED_PTR32 1
#define VECTOR_AVAIL_SCALED_PTR64 1
#define VECTOR_AVAIL_SCALED_PTR128 1
#define VECTOR_AVAIL_SHORT_SPAN 1
