#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/objects.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

/* Function-like macros that Swift cannot import. */
static inline long copenssl_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}
static inline long copenssl_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}
static inline int copenssl_sk_X509_num(const STACK_OF(X509) *stack) {
    return sk_X509_num(stack);
}
static inline int copenssl_sk_X509_push(STACK_OF(X509) *stack, X509 *cert) {
    return sk_X509_push(stack, cert);
}
static inline STACK_OF(X509) *copenssl_sk_X509_new_null(void) {
    return sk_X509_new_null();
}
static inline void copenssl_sk_X509_free(STACK_OF(X509) *stack) {
    sk_X509_free(stack);
}
static inline void copenssl_sk_X509_pop_free(STACK_OF(X509) *stack) {
    sk_X509_pop_free(stack, X509_free);
}
static inline X509 *copenssl_sk_X509_value(const STACK_OF(X509) *stack, int index) {
    return sk_X509_value(stack, index);
}
static inline long copenssl_BIO_get_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}
static inline int copenssl_OPENSSL_free(void *pointer) {
    OPENSSL_free(pointer);
    return 0;
}

/* Key selections, signature padding constants and extension flags (composite macros). */
static inline int copenssl_EVP_PKEY_PUBLIC_KEY(void) {
    return EVP_PKEY_PUBLIC_KEY;
}
static inline int copenssl_RSA_PSS_SALTLEN_DIGEST(void) {
    return RSA_PSS_SALTLEN_DIGEST;
}
static inline int copenssl_RSA_PKCS1_PSS_PADDING(void) {
    return RSA_PKCS1_PSS_PADDING;
}
static inline int copenssl_X509_is_ca_by_basic_constraints(X509 *cert) {
    uint32_t flags = X509_get_extension_flags(cert);
    return (flags & EXFLAG_BCONS) != 0 && (flags & EXFLAG_CA) != 0;
}
static inline unsigned long copenssl_X509_V_FLAG_PARTIAL_CHAIN(void) {
    return X509_V_FLAG_PARTIAL_CHAIN;
}
static inline X509 *copenssl_d2i_X509(const unsigned char *bytes, long length) {
    const unsigned char *cursor = bytes;
    X509 *cert = d2i_X509(NULL, &cursor, length);
    /* A certificate followed by trailing bytes is rejected. */
    if (cert != NULL && cursor != bytes + length) {
        X509_free(cert);
        return NULL;
    }
    return cert;
}
/* TLS: server name indication for a client connection. */
static inline long copenssl_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
#endif
