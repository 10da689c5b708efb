// Poplar's <poplar/TileConstants.hpp>. CTXT_WORKERS is the IPU's worker count (6): codelets that
// stride by it are correct on the "ipu1"/"ipu2" model targets; on other targets use numWorkers().
#pragma once

#ifndef CTXT_WORKERS
#define CTXT_WORKERS 6
#endif
