/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef SYNCHRO_FINGERPRINT_H
#define SYNCHRO_FINGERPRINT_H
#endif
