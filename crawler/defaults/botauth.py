"""Defaults of Web Bot Auth (``BOT_AUTH_*``): requests signed with the bot's
Ed25519 key, read by crawler/middlewares/botauth.py."""

# Path of the bot's Ed25519 private key (PEM, PKCS#8: `openssl genpkey -algorithm
# ed25519 -out key.pem`); every request is then signed (RFC 9421, Web Bot Auth).
# Empty: requests are not signed. A key that cannot be read stops start-up.
BOT_AUTH_KEY = ""
# The https origin serving the key directory at
# /.well-known/http-message-signatures-directory (`scrapy botauth` prints it), sent
# as Signature-Agent and signed. Empty: no Signature-Agent (warned at start).
BOT_AUTH_DIRECTORY_URL = ""
# Seconds a signature is valid after it is made (its `expires`), 1 to 86400.
BOT_AUTH_VALIDITY = 300.0
