-- The schema registry's own database (devtools/registry.py creates it on the local stack).
CREATE DATABASE apicurio;
