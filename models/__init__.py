"""Wire models of the Authority Delegation Management Service: every resource of spec section 2, every
request body of section 4, and the queries, envelope and page they travel in.

Import each model from its module (``from models.decisions import Decision``): the package itself loads
none of them, so a module that needs only ``models.errors`` or ``models.base`` does not pay for
building every model class."""
