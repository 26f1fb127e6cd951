/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef SYNCHRO_OUTCOME_H
#define SYNCHRO_OUTCOME_H
#endif
