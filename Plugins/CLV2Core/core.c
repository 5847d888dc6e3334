// Intentionally empty: SwiftPM needs a source file for a C target; the header is the point.
#include "CLV2Core.h"
