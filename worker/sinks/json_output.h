// Moved to worker/api/json_output.h (part of the job SDK); this forwarding header keeps old
// includes compiling.
#pragma once

#include "worker/api/json_output.h"
