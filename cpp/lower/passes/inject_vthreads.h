// InjectVirtualThreads: the iterations of a loop bound to a virtual thread are
// independent, like the work items of a group, so the loop need not run
// around its whole body. It is moved down to the statements that depend on
// it:
//  - a statement that neither uses the loop variable nor touches a buffer
//    that depends on it runs once (a shared-memory fetch of the group's tile,
//    a register tile that every virtual thread reads alike);
//  - a private buffer allocated inside the loop and written by a statement
//    that depends on it gets a leading dimension of the loop's extent, one
//    copy per virtual thread;
//  - the loop is pushed through loops, sequences, allocations, pragmas and
//    conditions that do not depend on it, down to the statements that do,
//    where it becomes an inner loop of kind VThread (code generation unrolls
//    it). A register tile split over virtual threads is thereby updated in one
//    innermost body, its parts interleaved as the split says.
// Where a shared-memory buffer is written by a statement that depends on the
// variable (one fetch per virtual thread), the loop stays where it is and
// runs serially: pushing it down would let one virtual thread's fetch
// overwrite another's before it is read.
#pragma once

#include "lower/stmt.h"

namespace autosched {

Stmt InjectVirtualThreads(const Stmt& s);

}  // namespace autosched
