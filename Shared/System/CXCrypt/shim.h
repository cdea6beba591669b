#ifndef CXCRYPT_SHIM_H
#define CXCRYPT_SHIM_H
#include <crypt.h>
#endif
