"""Rules only the orchestrators' faces use (the Airflow provider and the Dagster
integration): what a sensor waits for, object names as templates, the values JSON holds
exactly, an object's lineage identity. The core and the blocking facade never import
them (tests/house/test_layers.py)."""
