// ebb/runtime_handle.h — the former name of ebb/model_controls.h, kept for code that includes
// it: ebb::RuntimeHandle is ebb::ModelControls.
#pragma once

#include "ebb/model_controls.h"
