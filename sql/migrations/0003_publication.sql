-- SPDX-License-Identifier: BSD-2-Clause
-- Migration 3: the publication walsync names when it decodes with pgoutput
-- (publication_names 'synchro', messages 'true'). It holds no table on purpose: walsync
-- reads only the version-fence trigger's logical messages (prefix synchro), never row
-- images, so no application row leaves the database through replication.
-- Created by the installer, who has CREATE on the database (as for CREATE SCHEMA), and owned
-- by it: synchro_owner holds no database-level privilege to own one.
CREATE PUBLICATION synchro;
