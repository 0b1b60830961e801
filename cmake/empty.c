/* SPDX-License-Identifier: MIT */
/* empty.c - libsampo.so is made of the objects of the static libraries (cmake/install.cmake). */
typedef int sampo_empty_translation_unit;
