/* SPDX-License-Identifier: BSD-2-Clause */
/* placeholder: being written */
#include "config.h"
typedef int sy_placeholder_matrix;
