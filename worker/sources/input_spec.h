// Moved to common/input/input_spec.h (the CLI and the coordinator validate --input with it, and
// coordinator must not depend on worker); this header keeps the worker's includes working.
#pragma once

#include "common/input/input_spec.h"
