// Moved to support/error.h; this forwarding header goes once every file includes that.
#pragma once
#include "support/error.h"
