#ifndef CLV2_CORE_H
#define CLV2_CORE_H
// LV2's core header for plugins written in Swift (no library is linked: a plugin only exports lv2_descriptor).
#include <lv2/core/lv2.h>
#endif
