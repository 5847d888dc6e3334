#include <lilv/lilv.h>
// The LV2 extension headers a host needs: their structs import into Swift, their URI macros do not
// (SonoraLV2 keeps the URIs as Swift constants in LV2URI.swift).
#include <lv2/atom/atom.h>
#include <lv2/buf-size/buf-size.h>
#include <lv2/log/log.h>
#include <lv2/options/options.h>
#include <lv2/state/state.h>
#include <lv2/urid/urid.h>
#include <lv2/worker/worker.h>
