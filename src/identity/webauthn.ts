/**
 * @simplewebauthn/server and what it brings (about 290 modules: @peculiar's ASN.1 and X.509, tsyringe), loaded by the
 * first passkey ceremony rather than by every start of the service, its CLI commands and its test files.
 */
export const webauthn = () => import('@simplewebauthn/server');
