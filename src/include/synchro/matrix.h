/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef SYNCHRO_MATRIX_H
#define SYNCHRO_MATRIX_H
#endif
